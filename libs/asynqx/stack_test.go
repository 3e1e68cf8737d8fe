package asynqx

import (
	"context"
	"errors"
	"testing"

	"github.com/hibiken/asynq"
)

// GrowStack runs the handler it wraps, with the task and context it was given, and returns the
// handler's error as asynq would see it.
func TestGrowStackRunsTheHandler(t *testing.T) {
	type key struct{}
	want := errors.New("handler failed")
	var got *asynq.Task
	var gotValue any
	h := GrowStack(asynq.HandlerFunc(func(ctx context.Context, task *asynq.Task) error {
		got, gotValue = task, ctx.Value(key{})
		return want
	}))
	task := asynq.NewTask("t", []byte("p"))
	if err := h.ProcessTask(context.WithValue(context.Background(), key{}, "v"), task); !errors.Is(err, want) {
		t.Fatalf("error %v, want the handler's", err)
	}
	if got != task || gotValue != "v" {
		t.Fatalf("the handler got task %v and context value %v", got, gotValue)
	}
}
