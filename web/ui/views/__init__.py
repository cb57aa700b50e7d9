"""Page views: thin; they call the services and selectors and render templates."""
