package main

import (
	"fmt"

	"rentalplatform/libs/config"
)

const serviceName = "verification-svc"

// Config is everything verification-svc reads from the environment (docs/architecture.md).
type Config struct {
	config.Base
}

func loadConfig(getenv config.Getenv) (Config, error) {
	base, err := config.LoadBase(getenv, config.Defaults{HTTPAddr: "127.0.0.1:8091", MongoDatabase: "verification"})
	if err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	return Config{Base: base}, nil
}
