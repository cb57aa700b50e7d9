"""Worker processes: `parent` (in the API process: spawn, listen, stop) and `child`
(inside each worker: run the job, report over the pipe). Used by the local executor."""
