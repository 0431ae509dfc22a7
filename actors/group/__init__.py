"""The group coordinator: classic consumer groups and their offsets on the broker side."""
