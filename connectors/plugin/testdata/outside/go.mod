// A module outside Ardea's that registers its own plugins through the
// public API (TestOutsideModule builds and tests a copy of it with a
// replace directive pointing at this checkout).
module example.com/outside

go 1.26
