// Command prebuild builds the Kubernetes binaries the kube harness runs
// into the tests' persistent cache (kube.BuildBinaries), or finds them
// there: CI runs it (go tool task kube-bins) before the test command so
// that the build's minutes are not spent inside a test's timeout. A test
// still builds them itself when the cache is empty.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/signal"
	"time"

	"github.com/ardea-dev/ardea/internal/testutil/kube"
)

func main() {
	log.SetFlags(0)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	start := time.Now()
	dir, err := kube.BuildBinaries(ctx, log.Printf)
	if err != nil {
		log.Fatalf("kube binaries: %v", err)
	}
	fmt.Printf("kube-apiserver and kube-controller-manager %s in %s (%v)\n", kube.Release, dir, time.Since(start).Round(time.Millisecond))
}
