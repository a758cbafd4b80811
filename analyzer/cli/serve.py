"""``hvd-analyze serve``: the web app on a production WSGI server (waitress). The app itself
(:mod:`dashboards`) is imported only when the command runs."""

from __future__ import annotations

from pathlib import Path

import click

from analyzer.cli.options import budget_option, errors, imports_done
from analyzer.config import parse_size

#: the fewest characters an access token may have: shorter ones are guessed (a 1-character one was accepted)
MIN_TOKEN_CHARS = 16


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(exists=True))
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on. Any other than loopback needs --token or --trusted-proxy-header.",
)
@click.option("--port", default=8050, show_default=True, type=click.IntRange(1, 65535))
@click.option(
    "--store-dir",
    default="hvd-analyze-runs",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Where uploaded runs are stored (they persist across restarts).",
)
@click.option(
    "--max-upload", default="2G", show_default=True, help="Largest file one upload may carry (K, M or G suffix)."
)
@click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    metavar="NAME",
    help="A host name the app answers to besides localhost and --host (repeatable); any other Host header is "
    "refused (DNS rebinding), and so are changes from pages of other origins.",
)
@click.option(
    "--token",
    envvar="HVD_ANALYZE_TOKEN",
    metavar="SECRET",
    help="Access token (or HVD_ANALYZE_TOKEN): pages and API answer only requests that carry it "
    "(/?token=SECRET once, or 'Authorization: Bearer SECRET').",
)
@click.option(
    "--trusted-proxy-header",
    metavar="HEADER",
    help="Serve only requests carrying this header, set by the authenticating reverse proxy in front "
    "(e.g. X-Forwarded-User); the proxy must strip it from clients' requests.",
)
@click.option(
    "--threads",
    default=8,
    show_default=True,
    type=click.IntRange(1, 256),
    help="Requests served at once by the app's WSGI server (waitress).",
)
@click.option(
    "--workers",
    default=2,
    show_default=True,
    type=click.IntRange(1, 64),
    help="Runs ingested and analysed at once, each in a worker process (more wait, queued).",
)
@click.option(
    "--job-timeout",
    default=3600,
    show_default=True,
    type=click.IntRange(1, None),
    help="Seconds one run's worker may take; past it the run fails with that reason.",
)
@click.option(
    "--job-memory",
    default="4G",
    show_default=True,
    help="Memory one run's worker may use (K, M or G suffix); past it the run fails with that reason.",
)
@budget_option
def serve(
    paths: tuple[str, ...],
    host: str,
    port: int,
    store_dir: str,
    max_upload: str,
    allow_hosts: tuple[str, ...],
    token: str | None,
    trusted_proxy_header: str | None,
    threads: int,
    workers: int,
    job_timeout: int,
    job_memory: str,
    memory_budget: str,
) -> None:
    """Start the web app. PATHS: run stores to show, or files/folders to ingest as a new run."""
    from dashboards.api import LOOPBACK, Access
    from dashboards.app import create_app
    from dashboards.uploads import Limits
    from dashboards.worker import Budget

    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise click.UsageError(
            f"--token must be at least {MIN_TOKEN_CHARS} characters (a short one is guessed): for example "
            "`python3 -c 'import secrets; print(secrets.token_urlsafe(24))'`"
        )
    if host not in LOOPBACK and not (token or trusted_proxy_header):
        raise click.UsageError(
            f"--host {host} lets other machines reach the app, which shows and accepts post-mortems: give it an "
            "access control, --token SECRET (or HVD_ANALYZE_TOKEN) or --trusted-proxy-header HEADER behind an "
            "authenticating proxy, or keep the default --host 127.0.0.1"
        )
    with errors():
        limits = Limits(
            max_upload=parse_size(max_upload, "--max-upload"),
            memory_budget=parse_size(memory_budget, "--memory-budget"),
        )
        budget = Budget(workers=workers, seconds=job_timeout, memory=parse_size(job_memory, "--job-memory"))
        from analyzer.store.run_store import MANIFEST

        stores = [p for p in paths if (Path(p) / MANIFEST).is_file()]
        files = [p for p in paths if p not in stores]
        served = () if host in ("0.0.0.0", "::") else (host,)  # a wildcard address names no host
        access = Access(token=token, proxy_header=trusted_proxy_header)
        app = create_app(
            store_dir,
            stores=stores,
            paths=files or None,
            limits=limits,
            hosts=served + allow_hosts,
            access=access,
            budget=budget,
        )
    from dashboards import front  # waitress, a production WSGI server, with checks before a body is read

    imports_done()  # a server lives long: Python's own collector thresholds from here on

    click.echo(f"hvd-analyze: serving http://{host}:{port}/ (runs in {store_dir}; Ctrl-C stops)", err=True)
    front.serve(
        app.server,
        access,
        host=host,
        port=port,
        threads=threads,
        max_request_body_size=app.server.config["MAX_CONTENT_LENGTH"],  # beyond it: the app's 413 message
        ident="hvd-analyze",
    )
