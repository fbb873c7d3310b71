"""`apsi kernel install [--user] [--prefix PATH] [PERMISSIONS]`: the Jupyter kernelspec named `apsi`.

The permission flags are written into the kernelspec's command line: a notebook then runs with them
and its folder's trusted apsi.toml, exactly as `apsi run` would there. To change them, install again.
"""

import click

from . import options


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def kernel():
    """The Jupyter kernel for Apsi notebooks."""


@kernel.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--user", is_flag=True, help="Install for this user only (~/.local/share/jupyter).")
@click.option("--prefix", type=click.Path(file_okay=False), default=None,
              help="Install under PREFIX/share/jupyter/kernels (a virtual environment's sys.prefix).")
@click.option("--name", default="apsi", show_default=True, help="The kernelspec's name.")
@options.permission_options
def install(user, prefix, name, **perms):
    """Write the kernelspec; the PERMISSIONS are those every notebook with this kernel gets."""
    from . import runner
    from .kernel_spec import install_spec

    perms = {k: v for k, v in perms.items() if v is not None}
    try:
        for key, value in perms.items():
            runner._check_scope("--" + key.replace("_", "-"), value)
    except runner.FlagError as e:
        raise click.UsageError(str(e)) from None
    flags = options.to_args(_absolute_paths(perms, runner))
    try:
        where = install_spec(name, flags, user=user, prefix=prefix)
    except ImportError:
        from .extras import install_command

        raise click.ClickException("jupyter_client is not installed in the Python that runs Apsi: "
                                   f"{install_command('jupyter')}") from None
    except OSError as e:
        raise click.ClickException(f"cannot write the kernelspec: {e}; try --user") from None
    granted = " ".join(flags) or "no permission flags (the notebook folder's trusted apsi.toml still counts)"
    click.echo(f"Installed the Jupyter kernel '{name}' in {where}\n  with {granted}.\n"
               "Restart running kernels to use it; to change the permissions, install again.")


def _absolute_paths(perms, runner):
    """Paths in --allow-read=data mean what they mean here, in the shell that installs: the kernel
    runs in each notebook's folder, where `data` would be another folder."""
    out = dict(perms)
    for key in ("allow_read", "allow_write", "deny_read", "deny_write"):
        value = out.get(key)
        if isinstance(value, str) and value != "*":
            out[key] = ",".join(runner._path_item(p) for p in value.split(",") if p)
    return out
