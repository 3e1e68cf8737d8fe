package listen

import (
	"bufio"
	"io"
	"strings"
)

// message is one Server-Sent Events message (https://html.spec.whatwg.org/#server-sent-events):
// its event type ("message" when none was given), id and data.
type message struct {
	event, id, data string
	hasID           bool
}

// sseReader reads messages off a stream. Comment lines (heartbeats) produce no message; they
// count as activity through the reader underneath.
type sseReader struct {
	r *bufio.Reader
}

func newSSEReader(r io.Reader) *sseReader { return &sseReader{r: bufio.NewReaderSize(r, 64<<10)} }

// next returns the next message, or the error that ended the stream (io.EOF at its end).
func (s *sseReader) next() (message, error) {
	var m message
	var data strings.Builder
	dataLines := 0
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			if err == io.EOF && line != "" {
				err = io.ErrUnexpectedEOF // a message cut in the middle is not one
			}
			return message{}, err
		}
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		if line == "" {
			if dataLines == 0 && !m.hasID && m.event == "" {
				continue // a blank line after a comment, or nothing
			}
			if m.event == "" {
				m.event = "message"
			}
			m.data = data.String()
			return m, nil
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			m.event = value
		case "id":
			m.id, m.hasID = value, true
		case "data":
			if dataLines > 0 {
				data.WriteByte('\n')
			}
			data.WriteString(value)
			dataLines++
		}
	}
}
