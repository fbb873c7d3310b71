"""`apsi check-torch [--device cpu]`: check_torch() from the command line (exit 1 when it fails).

Runs every layer type on NumPy and on PyTorch in float64 and compares outputs and gradients; see
docs/backends.md. Running it is the user's explicit request, so it needs no --allow-python.
"""

import sys

import click


@click.command("check-torch", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--device", default="auto", show_default=True,
              help='Where to run the torch side: auto, cpu, cuda, cuda:N, mps, xpu.')
def check_torch(device):
    """Compare every layer on NumPy and PyTorch (float64); exit 1 on a difference above 1e-10."""
    from apsi_lang.errors import ApsiError

    try:
        from apsi_layers.backends import registry

        result = registry.find("torch").check(device, out=lambda line: click.echo(line))
    except ApsiError as e:
        click.echo(f"apsi check-torch: {e.message}", err=True)
        sys.exit(1)
    sys.exit(0 if result.ok else 1)
