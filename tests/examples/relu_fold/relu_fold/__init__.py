"""An out-of-tree ziggurat pass package: README "Your own passes" is taken from it."""
