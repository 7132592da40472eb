package api_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/daemon"
)

// A program talks to a daemon with a Client: here a real daemon started
// in this process (as `ardea local` runs one, but with its containers in
// process), on a port the kernel picks.
// Typed calls cover the topology routes; Do sends any other API request
// with the package's wire types, such as a tenant stream's.
func ExampleClient() {
	dir, err := os.MkdirTemp("", "ardea-api-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	d, err := daemon.Start(ctx, daemon.Options{DataDir: dir, Listen: "127.0.0.1:0", InProcess: &daemon.InProcess{}})
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = d.Close(ctx)
	}()

	c := api.NewClient(d.URL()) // a program would take "host:port", api.DefaultListen by default
	c.Token = d.AdminToken()    // the daemon checks bearer tokens

	tops, err := c.List(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("topologies:", len(tops))

	_, err = c.Status(ctx, "wordcount")
	fmt.Println("wordcount not found:", api.NotFound(err))

	var info api.StreamInfo
	if err := c.Do(ctx, "POST", "/api/v1/streams", api.CreateStreamRequest{Name: "events"}, &info); err != nil {
		log.Fatal(err)
	}
	var res api.PublishResult
	req := api.PublishRequest{Messages: []string{"hello", "world"}}
	if err := c.Do(ctx, "POST", "/api/v1/streams/events/messages", req, &res); err != nil {
		log.Fatal(err)
	}
	fmt.Println("stream", info.Name, "published", res.Published, "last seq", res.LastSeq)

	// Output:
	// topologies: 0
	// wordcount not found: true
	// stream events published 2 last seq 2
}
