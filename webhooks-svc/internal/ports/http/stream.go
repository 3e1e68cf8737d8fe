package http

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"regexp"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"rentalplatform/libs/apierr"

	"rentalplatform/webhooks-svc/internal/app"
)

// The event stream: GET /v1/events/stream, Server-Sent Events of the caller's events as they
// are stored, for `rental listen` (docs/events.md, "The event stream").
//
// Every event is sent with its feed position as the SSE id; a client that reconnects with
// Last-Event-ID gets what followed, from the feed (Redis), so a cut connection loses and
// doubles nothing. The first message (event "ready") gives the position to resume from before
// any event arrives, and the heartbeat interval. An idle stream sends a comment line every
// heartbeat, so a client can tell a live stream from a dead one. A stream ends itself after
// MaxDuration (event "reconnect"): every listener on the path (this service, the gateway)
// bounds a response's writing to 60 s, and a client resumes at once.

const streamPath = eventsPath + "/stream"

// StreamConfig sets the event stream's timing.
type StreamConfig struct {
	// Ctx ends every stream when it ends: the service's lifetime, so shutting down does not
	// wait for streams to run out.
	Ctx context.Context
	// Heartbeat is the longest silence on an open stream.
	Heartbeat time.Duration
	// MaxDuration is how long one response streams before it asks the client to reconnect.
	MaxDuration time.Duration
	Log         *slog.Logger
}

// streamBatch bounds the events read from the feed at once.
const streamBatch = 100

// feedPosition is a feed entry's position, as the stream gives it ("1764380000000-0").
var feedPosition = regexp.MustCompile(`^[0-9]{1,20}-[0-9]{1,20}$`)

// streamReady is the data of the stream's first message.
type streamReady struct {
	Object    string `json:"object"` // "event_stream"
	Livemode  bool   `json:"livemode"`
	Position  string `json:"position"`
	Resumed   bool   `json:"resumed"`
	Heartbeat int64  `json:"heartbeat_interval_ms"`
	Reconnect int64  `json:"max_duration_ms"`
}

// streamNotice is the data of a "gap" or "reconnect" message.
type streamNotice struct {
	Message string `json:"message"`
}

const gapMessage = "Events may be missing before this point: they are kept for a listener for a limited time, " +
	"or the queue's Redis lost its data. List them with GET /v1/events."

func (h handlers) streamEvents(c *fiber.Ctx) error {
	if h.stream.Ctx == nil {
		return app.ErrNoFeed
	}
	who := caller(c)
	after := string(c.Request().Header.Peek("Last-Event-ID"))
	if after != "" && !feedPosition.MatchString(after) {
		return apierr.Invalid(apierr.CodeParameterInvalid, "Last-Event-ID",
			"Last-Event-ID must be the id of a message this stream sent, such as 1764380000000-0.")
	}
	pos, gap, err := h.svc.OpenFeed(c.UserContext(), who, after)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, "text/event-stream; charset=utf-8")
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set("X-Accel-Buffering", "no") // a buffering proxy in front would hold the events back
	s := &feedStream{cfg: h.stream, svc: h.svc, who: who, pos: pos, gap: gap,
		ready: streamReady{Object: "event_stream", Livemode: who.Livemode, Position: pos, Resumed: after != "",
			Heartbeat: h.stream.Heartbeat.Milliseconds(), Reconnect: h.stream.MaxDuration.Milliseconds()}}
	// The writer runs once the handler has returned, with Fiber's context recycled: it uses
	// only what it was given here.
	c.Context().SetBodyStreamWriter(s.run)
	return nil
}

// feedStream is one response of the event stream.
type feedStream struct {
	cfg   StreamConfig
	svc   *app.Service
	who   app.Caller
	pos   string
	gap   bool
	ready streamReady
}

func (s *feedStream) run(w *bufio.Writer) {
	ctx, cancel := context.WithTimeout(s.cfg.Ctx, s.cfg.MaxDuration)
	defer cancel()
	deadline, _ := ctx.Deadline()
	// The client waits a second before reconnecting after a cut (SSE retry).
	w.WriteString("retry: 1000\n")
	writeMessage(w, "ready", s.pos, s.ready)
	if s.gap {
		writeMessage(w, "gap", "", streamNotice{Message: gapMessage})
	}
	if w.Flush() != nil {
		return
	}
	for {
		wait := min(s.cfg.Heartbeat, time.Until(deadline))
		if wait <= 0 {
			break
		}
		entries, lost, err := s.svc.ReadFeed(ctx, s.who, s.pos, wait, streamBatch)
		if err != nil {
			if ctx.Err() == nil {
				s.cfg.Log.Warn("event stream read failed; the client resumes", "account", s.who.Account, "error", err.Error())
				writeMessage(w, "reconnect", "", streamNotice{Message: "The stream met an internal error; reconnect with Last-Event-ID."})
				w.Flush()
				return
			}
			break
		}
		if lost {
			writeMessage(w, "gap", "", streamNotice{Message: gapMessage})
		}
		for _, e := range entries {
			w.WriteString("id: ")
			w.WriteString(e.Position)
			w.WriteString("\ndata: ")
			w.Write(e.Data) // compact JSON: one line
			w.WriteString("\n\n")
			s.pos = e.Position
		}
		if len(entries) == 0 && !lost {
			w.WriteString(": heartbeat ")
			w.WriteString(strconv.FormatInt(time.Now().Unix(), 10))
			w.WriteString("\n\n")
		}
		if w.Flush() != nil {
			return // the client went
		}
	}
	if errors.Is(s.cfg.Ctx.Err(), context.Canceled) {
		return // shutting down: the cut connection has the client resume elsewhere
	}
	writeMessage(w, "reconnect", "", streamNotice{Message: "This stream has run its length; reconnect with Last-Event-ID."})
	w.Flush()
}

// writeMessage writes one SSE message of type event, with id when not empty, whose data is v
// as JSON (one line).
func writeMessage(w *bufio.Writer, event, id string, v any) {
	b, _ := json.Marshal(v) // the messages' own types: cannot fail
	w.WriteString("event: ")
	w.WriteString(event)
	if id != "" {
		w.WriteString("\nid: ")
		w.WriteString(id)
	}
	w.WriteString("\ndata: ")
	w.Write(b)
	w.WriteString("\n\n")
}
