"""`apsi serve MODEL.apsim [--port P] [--workers N] [PERMISSIONS]`: serve a model file, no program needed.

The same as a program `serve_model(load_model("MODEL.apsim"), port=P, workers=N)` run with the same
permissions: listening needs `net` for the address (--allow-net=127.0.0.1:P), the model file's folder is
the project folder, and /predict answers with labels and probabilities when the file has labels.
"""

from pathlib import Path

import click

from . import options


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--host", default="127.0.0.1", show_default=True, help="The address to listen on.")
@click.option("--port", type=int, default=8000, show_default=True, help="The TCP port.")
@click.option("--workers", type=int, default=1, show_default=True, help="Server processes sharing the port.")
@click.option("--backend", default="numpy", show_default=True,
              help="numpy, torch (needs --allow-python) or auto.")
@click.option("--max-batch", type=int, default=64, show_default=True,
              help="The most rows one predict call takes.")
@options.permission_options
@click.argument("model", type=click.Path(dir_okay=False))
@click.pass_context
def serve(ctx, host, port, workers, backend, max_batch, model, **perms):
    """Serve MODEL (a file save_model wrote) over HTTP: POST /predict, GET /health, /info, /metrics."""
    import shlex

    from . import runner

    if Path(model).suffix == ".apsi":       # a program, not a model: it was "not a zip file"
        raise click.UsageError(f"{model} is an Apsi program, and apsi serve takes a model file (what "
                               f"save_model writes, MODEL.apsim): run the program with "
                               f"`apsi {shlex.quote(model)}` (serve_model or serve in it serve over HTTP)")
    outer = (ctx.parent.obj or {}).get("perms", {}) if ctx.parent else {}
    merged = options.merge(outer, perms)

    def action():
        from apsi_lang import permissions
        from apsi_layers.models import load_model
        from apsi_layers.web.api import serve_model

        permissions.mark_sandboxed()
        record = load_model(model)
        serve_model(record, host=host, port=port, workers=workers, backend=backend, max_batch=max_batch)

    ctx.exit(runner.guarded(action, prepare=lambda: runner._prepare(merged, Path(model).parent)))
