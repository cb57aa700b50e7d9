"""Open a video and decode its first frame, in a process of its own (`media.probe_video`).

Run as `python -I video_probe.py PATH MAX_PIXELS`; prints one JSON object: `opened`, and
once opened `fps`, `frames`, `width`, `height` (the container's, or the decoded frame's)
and `decoded`. A frame size the container declares over MAX_PIXELS is reported without
decoding anything. Imports nothing of Carril's: it runs isolated, on a stranger's file.
"""

from __future__ import annotations

import json
import sys


def probe(path: str, max_pixels: int) -> dict[str, object]:
    import cv2

    capture = cv2.VideoCapture(path)
    try:
        if not capture.isOpened():
            return {"opened": False}
        # Read from the container's headers: nothing is decoded yet.
        found: dict[str, object] = {
            "opened": True,
            "fps": float(capture.get(cv2.CAP_PROP_FPS) or 0.0),
            "frames": int(capture.get(cv2.CAP_PROP_FRAME_COUNT) or 0),
            "width": int(capture.get(cv2.CAP_PROP_FRAME_WIDTH) or 0),
            "height": int(capture.get(cv2.CAP_PROP_FRAME_HEIGHT) or 0),
            "decoded": False,
        }
        if int(found["width"]) * int(found["height"]) > max_pixels:
            return found
        ok, frame = capture.read()
        if ok and frame is not None:
            # What the stream holds, which the container's header may not have told.
            height, width = frame.shape[:2]
            found.update(decoded=True, width=width, height=height)
        return found
    finally:
        capture.release()


if __name__ == "__main__":
    print(json.dumps(probe(sys.argv[1], int(sys.argv[2]))))
