"""The verbs of `ziggurat`, one module each (compile, run, bench, tune, demo): each owns its
argparse subparser (`add_parser`) and its handler; options.py holds the flags they share."""
