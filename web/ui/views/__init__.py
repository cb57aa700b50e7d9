"""Page views: thin; they call the backend's services and selectors and render templates."""
