package main

import (
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestStore: the store serves MongoDB on its address, its -healthcheck pings it, what it
// stored is there after a restart on the same folder, and the check fails once it is gone.
func TestStore(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	settings := map[string]string{"FERRETDB_ADDR": addr, "FERRETDB_DIR": t.TempDir()}
	getenv := func(k string) string { return settings[k] }

	start := func() (stop func()) {
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		listening := &lineWatch{want: `"msg":"listening"`, seen: make(chan struct{})}
		go func() { done <- run(ctx, nil, getenv, listening) }()
		deadline := time.Now().Add(30 * time.Second)
		for run(t.Context(), []string{"-healthcheck"}, getenv, io.Discard) != nil {
			if time.Now().After(deadline) {
				t.Fatal("-healthcheck did not pass within 30s")
			}
			time.Sleep(100 * time.Millisecond)
		}
		// The healthcheck can pass through the relay while the program's own start-up ping
		// is still waiting for its driver's next heartbeat; stopping then tests the
		// stopped-while-starting path instead (TestStopWhileStarting).
		select {
		case <-listening.seen:
		case <-time.After(30 * time.Second):
			t.Fatal("no \"listening\" line within 30s of a passing healthcheck")
		}
		return func() {
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("stop: %v", err)
			}
		}
	}
	collection := func(client *mongo.Client) *mongo.Collection { return client.Database("webhooks").Collection("events") }
	connect := func() *mongo.Client {
		client, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + addr + "/"))
		if err != nil {
			t.Fatal(err)
		}
		return client
	}

	stop := start()
	client := connect()
	if _, err := collection(client).InsertOne(t.Context(), bson.M{"_id": "evt_1"}); err != nil {
		t.Fatal(err)
	}
	_ = client.Disconnect(context.Background())
	stop()
	if err := run(t.Context(), []string{"-healthcheck"}, getenv, io.Discard); err == nil {
		t.Fatal("-healthcheck passed with the store stopped")
	}

	stop = start()
	defer stop()
	client = connect()
	defer client.Disconnect(context.Background())
	if n, err := collection(client).CountDocuments(t.Context(), bson.M{"_id": "evt_1"}); err != nil || n != 1 {
		t.Fatalf("after a restart: %d documents, %v", n, err)
	}
	if err := run(t.Context(), []string{"-v"}, getenv, io.Discard); err == nil {
		t.Fatal("an unknown argument was accepted")
	}
}

// TestStopWhileStarting: a stop (SIGTERM) that arrives before the store is ready is a clean
// exit, not a start-up failure, and the folder opens again afterwards.
func TestStopWhileStarting(t *testing.T) {
	settings := map[string]string{"FERRETDB_ADDR": "127.0.0.1:0", "FERRETDB_DIR": t.TempDir()}
	getenv := func(k string) string { return settings[k] }
	for _, after := range []time.Duration{0, time.Millisecond, 10 * time.Millisecond} {
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- run(ctx, nil, getenv, io.Discard) }()
		time.Sleep(after)
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("stopped %v after the start: %v", after, err)
		}
	}
}

// lineWatch is the program's stdout: it closes seen once a written line contains want.
type lineWatch struct {
	want string
	once sync.Once
	seen chan struct{}
}

func (w *lineWatch) Write(p []byte) (int, error) {
	if strings.Contains(string(p), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return len(p), nil
}
