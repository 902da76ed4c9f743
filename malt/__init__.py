"""malt: experiments on matrices whose rows and columns depend on each other."""
__version__ = "0.1.0"
