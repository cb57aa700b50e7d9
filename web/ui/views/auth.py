"""Sign in and sign out, on Django's own views with Carril's templates."""

from __future__ import annotations

from django.contrib.auth import views as auth_views

sign_in = auth_views.LoginView.as_view(
    template_name="ui/login.html",
    redirect_authenticated_user=True,
)

# LogoutView only accepts POST: signing out is a state change and carries a CSRF token.
sign_out = auth_views.LogoutView.as_view()
