// Command podprog is the process the kube harness's tests run as a
// container. Each start appends one JSON record (Start) to OUT/POD.start,
// POD being $POD_NAME: what the process was given (args, chosen
// variables, the content of chosen files); with -record, its pid is also
// appended to DIR/starts (DIR a volume whose persistence is tested). It then exits with -exit, or
// waits for SIGTERM and appends its pid to OUT/POD.stop before exiting 0.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
)

// Start is one start's record.
type Start struct {
	Pid   int               `json:"pid"`
	Args  []string          `json:"args"`
	Env   map[string]string `json:"env"`
	Files map[string]string `json:"files"` // path: content, or "error: ..."
}

type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(s string) error { *l = append(*l, s); return nil }

func main() {
	out := flag.String("out", "", "directory of the records")
	exit := flag.Int("exit", -1, "exit at once with this code (-1: wait for SIGTERM)")
	failOnce := flag.String("fail-once", "", "if this file does not exist, make it and exit 1")
	record := flag.String("record", "", "a directory (a volume) to append the pid to DIR/starts in, after the reads")
	var reads, envs list
	flag.Var(&reads, "read", "a file whose content to record (repeatable)")
	flag.Var(&envs, "env", "an environment variable to record (repeatable)")
	flag.Parse()
	// Signals first: a SIGTERM right after the record must not kill
	// the process unrecorded.
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)

	pod := os.Getenv("POD_NAME")
	if *out == "" || pod == "" {
		fmt.Fprintln(os.Stderr, "podprog: needs -out and $POD_NAME")
		os.Exit(2)
	}
	rec := Start{Pid: os.Getpid(), Args: os.Args[1:], Env: map[string]string{}, Files: map[string]string{}}
	for _, e := range envs {
		rec.Env[e] = os.Getenv(e)
	}
	for _, p := range reads {
		b, err := os.ReadFile(p)
		if err != nil {
			rec.Files[p] = "error: " + err.Error()
		} else {
			rec.Files[p] = string(b)
		}
	}
	if *record != "" {
		appendLine(filepath.Join(*record, "starts"), fmt.Sprint(rec.Pid))
	}
	code := *exit
	if *failOnce != "" {
		if _, err := os.Stat(*failOnce); err != nil {
			must(os.WriteFile(*failOnce, nil, 0o644))
			code = 1
		}
	}
	line, err := json.Marshal(rec)
	must(err)
	appendLine(filepath.Join(*out, pod+".start"), string(line))
	fmt.Printf("podprog %s started (pid %d)\n", pod, rec.Pid)
	if code >= 0 {
		os.Exit(code)
	}
	<-term
	appendLine(filepath.Join(*out, pod+".stop"), fmt.Sprint(rec.Pid))
	fmt.Printf("podprog %s stopped\n", pod)
}

func appendLine(path, line string) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	must(err)
	_, err = fmt.Fprintln(f, line)
	must(err)
	must(f.Close())
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "podprog:", err)
		os.Exit(3)
	}
}
