"""Output for people: console tables, PNG plots, progress bars."""
