"""The `apsi` command (Click). Subcommands load lazily so `apsi -e "print(1)"` starts fast."""
