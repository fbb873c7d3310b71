"""`python -m apsi_cli.kernel -f CONNECTION_FILE [-- PERMISSION FLAGS]`: what the kernelspec runs."""

import os
import sys


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    own, flags = (argv[:argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, [])
    try:
        from ipykernel.kernelapp import IPKernelApp
    except ImportError:
        from ..extras import install_command

        sys.stderr.write(f"apsi kernel: ipykernel is not installed: {install_command('jupyter')}\n")
        return 2
    from .kernel import FLAGS_ENV, ApsiKernel
    from .worker import parse_flags

    parse_flags(flags)                       # a wrong flag stops here, in words, before Jupyter waits
    os.environ[FLAGS_ENV] = "\n".join(flags)
    IPKernelApp.launch_instance(argv=own, kernel_class=ApsiKernel)
    return 0


if __name__ == "__main__":
    sys.exit(main())
