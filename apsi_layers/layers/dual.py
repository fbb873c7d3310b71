"""The two names `use nn` and `use layers` share, each one function serving both meanings."""


def flatten(tree=None, name=None):
    """flatten() is the layer [B, ...] -> [B, features]; flatten(tree) is nn's [(dotted name, tensor)]."""
    if tree is None:
        from .core import flatten as layer

        return layer(name)
    from apsi_layers.nn import flatten as pairs

    return pairs(tree)


def vae(*args, **kwargs):
    """vae(inputs, latent, hidden=[...]) is the model; vae(recon, x, mu, logvar) is nn's loss."""
    if args and isinstance(args[0], int) and not isinstance(args[0], bool):
        from .zoo import vae as model

        return model(*args, **kwargs)
    from apsi_layers.nn import vae as loss

    return loss(*args, **kwargs)
