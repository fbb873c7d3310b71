"""What training uses from nn: the optimizers (optim.py; optim_inplace.py and blockwise.py are their
temporary-free float64 steps), learning-rate schedules, losses and metrics (shared with fit's metrics=)."""
