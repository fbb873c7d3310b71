"""The kernelspec of `apsi kernel install`: kernel.json in a temporary folder, installed by
jupyter_client's KernelSpecManager (which decides where: --user, --prefix or system-wide)."""

import json
import sys
import tempfile
from pathlib import Path


def spec(flags):
    """kernel.json's content: the permission flags travel after `--` on the kernel's command line."""
    argv = [sys.executable, "-m", "apsi_cli.kernel", "-f", "{connection_file}"]
    if flags:
        argv += ["--", *flags]
    return {"argv": argv, "display_name": "Apsi", "language": "apsi", "interrupt_mode": "signal",
            "metadata": {"apsi_permissions": list(flags)}}


def install_spec(name, flags, user=False, prefix=None):
    from jupyter_client.kernelspec import KernelSpecManager

    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "kernel.json").write_text(json.dumps(spec(flags), indent=1), encoding="utf-8")
        return KernelSpecManager().install_kernel_spec(folder, name, user=user, prefix=prefix)
