package main

import (
	"context"
	"io"
	"net"
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
		go func() { done <- run(ctx, nil, getenv, io.Discard) }()
		deadline := time.Now().Add(30 * time.Second)
		for run(t.Context(), []string{"-healthcheck"}, getenv, io.Discard) != nil {
			if time.Now().After(deadline) {
				t.Fatal("-healthcheck did not pass within 30s")
			}
			time.Sleep(100 * time.Millisecond)
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
