"""`carril tokens list|create|revoke`; administrators make scoped (CI) tokens."""

from __future__ import annotations

from typing import Annotated

import typer

from carril_client.cli.common import JsonOption, client, output

app = typer.Typer(help="Your API tokens; scoped tokens for CI.", no_args_is_help=True)


@app.command("list")
def list_(json_: JsonOption = False) -> None:
    """Your tokens (never their secrets)."""
    out = output(json_)
    with client() as carril:
        tokens = carril.tokens_list()
    out.emit(
        tokens,
        lambda: out.table(
            ["id", "name", "prefix", "scopes", "expires", "active"],
            [
                [t["id"], t["name"], t["prefix"], ",".join(t.get("scopes") or []) or "all",
                 t.get("expires_at"), t.get("active")]
                for t in tokens
            ],
        ),
    )  # fmt: skip


@app.command("create")
def create(
    name: Annotated[str, typer.Option("--name", "-n")],
    scopes: Annotated[
        str | None, typer.Option(help="comma-separated, e.g. read,train,promote-gated")
    ] = None,
    user: Annotated[str | None, typer.Option(help="administrators: for this user")] = None,
    json_: JsonOption = False,
) -> None:
    """A new token, printed once. With --scopes (administrators), a limited CI token."""
    out = output(json_)
    wanted = [s.strip() for s in scopes.split(",") if s.strip()] if scopes else None
    with client() as carril:
        issued = carril.token_create(name=name, scopes=wanted, user=user)
    out.emit(issued, lambda: out.say(issued["token"]))


@app.command("revoke")
def revoke(token_id: int, json_: JsonOption = False) -> None:
    """Revoke one of your tokens."""
    out = output(json_)
    with client() as carril:
        carril.token_revoke(token_id)
    out.emit({"revoked": token_id}, lambda: out.say(f"token {token_id} revoked"))
