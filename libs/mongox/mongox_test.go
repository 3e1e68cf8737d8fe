package mongox

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"rentalplatform/embedded/testkit"
)

func TestMonitorTracesCommands(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := trace.NewTracerProvider(trace.WithSpanProcessor(rec))
	env := testkit.Mongo(t)
	client, db, err := Connect(Config{URI: env.URI, Database: env.Database, TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Disconnect(context.Background())
	ctx, parent := tp.Tracer("test").Start(context.Background(), "parent")
	if _, err := db.Collection("c").InsertOne(ctx, bson.D{{Key: "x", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	parent.End()
	for _, s := range rec.Ended() {
		if s.Name() == "mongodb.insert" {
			if s.Parent().SpanID() != parent.SpanContext().SpanID() {
				t.Fatal("mongodb.insert is not a child of the caller's span")
			}
			return
		}
	}
	t.Fatalf("no mongodb.insert span among %d spans", len(rec.Ended()))
}

// A command run outside any trace (a background poll) makes no span, so it makes no trace of
// its own.
func TestMonitorSkipsCommandsOutsideTraces(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := trace.NewTracerProvider(trace.WithSpanProcessor(rec))
	env := testkit.Mongo(t)
	client, db, err := Connect(Config{URI: env.URI, Database: env.Database, TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Disconnect(context.Background())
	if _, err := db.Collection("c").InsertOne(context.Background(), bson.D{{Key: "x", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	if n := len(rec.Ended()); n != 0 {
		t.Fatalf("%d spans for a command outside any trace", n)
	}
}
