package mongostore

import (
	"encoding/binary"
	"testing"

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
