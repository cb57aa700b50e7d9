"""The Carril web platform: datasets, model registry, jobs, REST API and browser UI."""
