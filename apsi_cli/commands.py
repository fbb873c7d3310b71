"""The subcommands of `apsi`, by name: where each lives and its one-line help. Read by the fast path
(fast.py: a command line naming one needs Click), the Click group (group.py) and main.py; here, so none
of them imports another for it. No Click here: importing this costs nothing at start.
"""

# name -> "module:attribute"; imported on first use so start-up stays light.
LAZY_COMMANDS = {
    "run": ("apsi_cli.run_cmd:run", "Run an Apsi program: apsi run [PERMISSIONS] FILE [ARGS]..."),
    "check": ("apsi_cli.check_cmd:check", "Compile programs without running them (exit 2 on an error)."),
    "check-torch": ("apsi_cli.check_torch_cmd:check_torch",
                    "Compare every layer on NumPy and PyTorch in float64 (exit 1 on a difference)."),
    "pkg": ("apsi_cli.pkg_cmd:pkg", "Install, list and remove packages (PyTorch builds too)."),
    "doctor": ("apsi_cli.doctor:doctor", "Explain this machine's setup: Python, NumPy, PyTorch, GPUs."),
    "setup": ("apsi_cli.setup_wizard:setup", "The setup wizard: hardware, PyTorch build, apsi.toml."),
    "launch": ("apsi_cli.launch_cmd:launch",
               "Run a program on several processes (torchrun) for fit(…, distributed=true)."),
    "kernel": ("apsi_cli.kernel_cmd:kernel",
               "Install the Jupyter kernel: apsi kernel install [--user] [PERMISSIONS]."),
    "lsp": ("apsi_cli.lsp_cmd:lsp", "The language server for editors (stdio)."),
    "serve": ("apsi_cli.serve_cmd:serve",
              "Serve a model file over HTTP (apsi serve model.apsim --port 8000 --allow-net=…)."),
    "trust": ("apsi_cli.trust_cmd:trust", "Review an apsi.toml and trust it (it grants nothing until then)."),
    "doc": ("apsi_cli.doc_cmd:doc", "Show what a builtin, a module or a function is: apsi doc fit."),
}
