package chaos

// KnownFailing lists the rows (Row.Key: "fault/mode") observed failing
// against the current tree, each with what was seen and which part of
// issue 20 fixes it. The suite skips them unless ARDEA_CHAOS_ALL=1; remove
// an entry once its fix has landed and the row passes.
var KnownFailing = map[string]string{
	"rescale-prepare/at_least_once": "a container killed while a live switch prepares (switch-prepare) leaves the update waiting: " +
		"the live switch (scheduler/local/update_live.go) does not yet abandon itself when a container dies under it; " +
		"the row hung until its 3-minute hang limit on 2026-12-05 (long schedule only)",
}
