"""What every command shares: how it ends (``running``: exit codes, one error line, Ctrl-C, a closed
pipe) and how it spells options in the user's interface (``spelling``)."""
