from xdsl.universe import Universe


def _relu_fold():
    from relu_fold.relu_fold import ReluFold  # imported when the pass is used

    return ReluFold


UNIVERSE = Universe(all_passes={"relu-fold": _relu_fold})
