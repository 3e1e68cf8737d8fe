package mongostore

import (
	"bufio"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// buildOpMsg builds an OP_MSG with flags and a body section (kind 0), optionally preceded by a
// document-sequence section (kind 1), as drivers send them.
func buildOpMsg(t testing.TB, flags uint32, body bson.D, withSequence bool) []byte {
	t.Helper()
	raw, err := bson.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	msg := make([]byte, 16, 64)
	msg = binary.LittleEndian.AppendUint32(msg, flags)
	if withSequence {
		doc, _ := bson.Marshal(bson.D{{Key: "_id", Value: 1}})
		seq := append([]byte("documents\x00"), doc...)
		msg = append(msg, 1)
		msg = binary.LittleEndian.AppendUint32(msg, uint32(4+len(seq)))
		msg = append(msg, seq...)
	}
	msg = append(msg, 0)
	msg = append(msg, raw...)
	binary.LittleEndian.PutUint32(msg[0:4], uint32(len(msg)))
	binary.LittleEndian.PutUint32(msg[4:8], 7)
	binary.LittleEndian.PutUint32(msg[12:16], opMsg)
	return msg
}

func TestGatedWrite(t *testing.T) {
	for _, tc := range []struct {
		name  string
		msg   []byte
		db    string
		gated bool
	}{
		{"insert", buildOpMsg(t, 0, bson.D{{Key: "insert", Value: "c"}, {Key: "$db", Value: "webhooks"}}, true), "webhooks", true},
		{"update", buildOpMsg(t, 0, bson.D{{Key: "update", Value: "c"}, {Key: "$db", Value: "gateway"}}, false), "gateway", true},
		{"findAndModify in any case", buildOpMsg(t, 0, bson.D{{Key: "findAndModify", Value: "c"}, {Key: "$db", Value: "x"}}, false), "x", true},
		{"createIndexes", buildOpMsg(t, 0, bson.D{{Key: "createIndexes", Value: "c"}, {Key: "$db", Value: "x"}}, false), "x", true},
		{"find is a read", buildOpMsg(t, 0, bson.D{{Key: "find", Value: "c"}, {Key: "$db", Value: "x"}}, false), "", false},
		{"hello", buildOpMsg(t, 0, bson.D{{Key: "hello", Value: 1}, {Key: "$db", Value: "admin"}}, false), "", false},
		{"unacknowledged write", buildOpMsg(t, msgMoreToCome, bson.D{{Key: "insert", Value: "c"}, {Key: "$db", Value: "x"}}, false), "", false},
		{"write without $db", buildOpMsg(t, 0, bson.D{{Key: "insert", Value: "c"}}, false), "", false},
		{"not OP_MSG", append(make([]byte, 12), 0xd4, 0x07, 0, 0, 0, 0, 0, 0, 0), "", false},
		{"truncated", buildOpMsg(t, 0, bson.D{{Key: "insert", Value: "c"}, {Key: "$db", Value: "x"}}, false)[:24], "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, gated := gatedWrite(tc.msg)
			if db != tc.db || gated != tc.gated {
				t.Fatalf("gatedWrite = %q, %v; want %q, %v", db, gated, tc.db, tc.gated)
			}
		})
	}
}

// The relay reads every client's bytes: whatever they are, gatedWrite must not panic.
func FuzzGatedWrite(f *testing.F) {
	f.Add(buildOpMsg(f, 0, bson.D{{Key: "insert", Value: "c"}, {Key: "$db", Value: "x"}}, true))
	f.Add(buildOpMsg(f, msgChecksum, bson.D{{Key: "update", Value: "c"}, {Key: "$db", Value: "x"}}, false))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, msg []byte) {
		gatedWrite(msg)
	})
}

// TestGateHandOverAcrossDatabases: a client that writes one database and then, before the relay
// has given that gate back, another (here: the second command sent before the first reply is
// read) must not leave the first gate taken. The relay kept one gate per connection, so the
// second overwrote the first, which was never given back: every later write of that database
// waited forever.
func TestGateHandOverAcrossDatabases(t *testing.T) {
	upstream, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer upstream.Close()
	go func() { // answers every command with {ok: 1}, in order
		for {
			c, err := upstream.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					msg, err := readMessage(r)
					if err != nil {
						return
					}
					reply := buildOpMsg(t, 0, bson.D{{Key: "ok", Value: 1}}, false)
					copy(reply[8:12], msg[4:8]) // responseTo
					if _, err := c.Write(reply); err != nil {
						return
					}
				}
			}()
		}
	}()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go relay(ln, upstream.Addr().String())
	defer ln.Close()

	write := func(db string, id uint32) []byte {
		m := buildOpMsg(t, 0, bson.D{{Key: "insert", Value: "c"}, {Key: "$db", Value: db}}, false)
		binary.LittleEndian.PutUint32(m[4:8], id)
		return m
	}
	dial := func() (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		return c, bufio.NewReader(c)
	}
	c1, r1 := dial()
	defer c1.Close()
	if _, err := c1.Write(append(write("a", 1), write("b", 2)...)); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if _, err := readMessage(r1); err != nil {
			t.Fatalf("reply %d: %v", i+1, err)
		}
	}
	// Both gates are free again: another connection writes each database.
	c2, r2 := dial()
	defer c2.Close()
	for i, db := range []string{"a", "b", "a"} {
		if _, err := c2.Write(write(db, uint32(10+i))); err != nil {
			t.Fatal(err)
		}
		if _, err := readMessage(r2); err != nil {
			t.Fatalf("write %d to %s after the hand-over: %v (its gate was never given back)", i+1, db, err)
		}
	}
}
