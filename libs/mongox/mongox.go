// Package mongox connects to MongoDB the way every process does: with a command monitor that
// traces each command. What is stored, and how, is libs/docstore's.
package mongox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.opentelemetry.io/otel/trace"
)

// Config says where a service's database is.
type Config struct {
	URI      string
	Database string
	AppName  string
	// TracerProvider, when set, traces every command (see NewMonitor).
	TracerProvider trace.TracerProvider
}

// Connect opens a client and returns it with the configured database. It does not wait for the
// server: readiness checks call Ping.
func Connect(cfg Config) (*mongo.Client, *mongo.Database, error) {
	if cfg.URI == "" || cfg.Database == "" {
		return nil, nil, errors.New("mongo: URI and database are required")
	}
	opts := options.Client().ApplyURI(cfg.URI).SetAppName(cfg.AppName).
		SetServerSelectionTimeout(5 * time.Second).SetConnectTimeout(5 * time.Second)
	if cfg.TracerProvider != nil {
		opts.SetMonitor(NewMonitor(cfg.TracerProvider))
	}
	client, err := mongo.Connect(opts)
	if err != nil {
		return nil, nil, fmt.Errorf("mongo connect: %w", err)
	}
	return client, client.Database(cfg.Database), nil
}

// Ping checks that the server answers within ctx.
func Ping(ctx context.Context, db *mongo.Database) error {
	if err := db.Client().Ping(ctx, nil); err != nil {
		return fmt.Errorf("mongo ping: %w", err)
	}
	return nil
}

// IsDuplicateKey reports whether err is a unique-index violation.
func IsDuplicateKey(err error) bool { return mongo.IsDuplicateKeyError(err) }
