package chaos

// KnownFailing lists the rows (Row.Key: "fault/mode") observed failing
// against the current tree, each with what was seen and which part of
// issue 20 fixes it. The suite skips them unless ARDEA_CHAOS_ALL=1; remove
// an entry once its fix has landed and the row passes.
var KnownFailing = map[string]string{
	"rescale-prepare/at_least_once": "a container killed while a live switch prepares (switch-prepare) leaves the update waiting: " +
		"the live switch (scheduler/local/update_live.go) does not yet abandon itself when a container dies under it; " +
		"the row hung until its 3-minute hang limit on 2026-12-05 (long schedule only)",
	"rescale-handoff/at_least_once": "the same live switch, killed once a host has handed off its key groups (handoff_done): " +
		"`ardea update` waits, the spout stays PENDING, no tuple flows until the row's 3-minute hang limit " +
		"(2026-12-05, seed 20, long schedule only; 5020 duplicate lines in the output so far, nothing lost)",
}
