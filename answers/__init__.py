"""The answers to the questions the product asks (the prediction of a point with its band, the depth curve
and its best, the schedule over loads), each computed in one place that every page and command calls."""
