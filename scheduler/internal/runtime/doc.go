// Package runtime is Ardea's own: it holds the container runtimes a daemon
// runs a topology's containers with, and the one definition of a container's
// id (id.go):
//
//   - Processes: each container an `ardea host` process under the
//     launcher (`ardea local`); the daemon says how to start one (its
//     ProcessSpec: command line, environment, credentials, cgroup).
//   - InProcess: each container goroutines of the daemon's own process
//     (`ardea run`), supervised as the launcher supervises a process
//     (restarts after a back-off, or fail fast); the daemon says what one
//     run is (process.Run over an in-process connection).
//   - kube.Runtime (package kube): each container a pod of its
//     topology's StatefulSet (scheduler: kubernetes); the daemon says
//     what the pods run (their command line, credential, size).
//
// All are driven the same way by a topology manager (scheduler/internal/manager's
// Runtime, adapted by the daemon): start container c of a topology, stop,
// restart, remove, status, list, and kill a container declared lost. Ids
// are ID's; states and restarts follow the launcher's.
package runtime
