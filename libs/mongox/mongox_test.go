package mongox

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"rentalplatform/embedded/testkit"
)

// traced connects to a database of the test's own with a recording tracer provider.
func traced(t *testing.T) (*tracetest.SpanRecorder, *trace.TracerProvider, *mongo.Database) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := trace.NewTracerProvider(trace.WithSpanProcessor(rec))
	env := testkit.Mongo(t)
	client, db, err := Connect(Config{URI: env.URI, Database: env.Database, TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Disconnect(context.Background()) })
	return rec, tp, db
}

func TestMonitorTracesCommands(t *testing.T) {
	rec, tp, db := traced(t)
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
	rec, _, db := traced(t)
	if _, err := db.Collection("c").InsertOne(context.Background(), bson.D{{Key: "x", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	if n := len(rec.Ended()); n != 0 {
		t.Fatalf("%d spans for a command outside any trace", n)
	}
}
