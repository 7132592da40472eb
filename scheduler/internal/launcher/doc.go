// Package launcher is Ardea's own: it runs local processes (the `ardea host`
// containers of `ardea local`) as separate OS processes and supervises them:
// it restarts a process that exits, with exponential back-off, gives up
// after too many consecutive quick failures, keeps each process's output in
// a log file and an in-memory tail, and makes sure no child outlives its
// supervisor.
//
// # States
//
// A supervised process is in one of these states:
//
//	STARTING  the supervisor is forking/exec'ing it
//	RUNNING   it runs (Status.PID is its pid)
//	BACKOFF   it exited on its own; it will be started again after a delay
//	FAILED    it exited MaxRestarts+1 times in a row, each run shorter than
//	          StableAfter (or it could not be exec'd); LastError holds the
//	          tail of its stderr. It is not restarted until Restart or Start.
//	STOPPED   Stop (or StopAll/Close) ended it; it is not restarted.
//
// Every exit that Stop did not ask for is a failure, whatever its exit
// status. A run that lasted at least StableAfter resets the count of
// consecutive failures before its own exit is counted. Restart is a user
// action: it resets the count and starts the process at once.
//
// # Back-off
//
// After the n-th consecutive failure the process is started again after
// min(Initial*Factor^(n-1), Max). With MaxRestarts = 3 a process that
// crashes at once runs 4 times (the first run and 3 restarts) and is then
// FAILED.
//
// # Orphans
//
// Each child is the leader of its own process group (Setpgid), so one
// signal to the group reaches everything it forked: Stop sends SIGTERM to
// the group, SIGKILL after the grace period, and after any exit of the
// leader the supervisor sends SIGKILL to the group so that stray
// grandchildren of a crashed process do not survive it.
//
// On Linux each child also gets Pdeathsig = SIGKILL, so it dies when the
// supervisor dies, even by SIGKILL. The kernel ties that signal to the
// thread that forked the child, not to the process, so the Supervisor forks
// every child from one goroutine locked to its OS thread for the
// Supervisor's whole life (runtime.LockOSThread); callers may call Start
// from any goroutine. Limits: Pdeathsig reaches only the direct child, not
// processes that child started (a child that forks must arrange its own
// Pdeathsig, or the grandchildren survive a SIGKILL of the supervisor,
// though not Stop or a crash of the child); a child that leaves its process
// group (setsid/setpgid) escapes the group kill; on other Unix systems
// there is no Pdeathsig, only the group kill.
//
// # Concurrency
//
// All methods are safe for concurrent use. Each process has one
// supervising goroutine that owns its state and serializes Start, Stop,
// Restart and Remove for that id; Options.OnChange is called from that
// goroutine, in order for each process, with no lock held.
package launcher
