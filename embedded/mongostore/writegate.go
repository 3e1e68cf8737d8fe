package mongostore

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// The write gate is a MongoDB wire-protocol relay in front of FerretDB that lets one write
// command per database reach it at a time.
//
// Why: SQLite has a single writer per database file, and FerretDB gives each database a pool
// of up to 100 SQLite connections. Two writes that overlap make the second wait in SQLite's
// default busy handler, which sleeps 1, 2, 5 … 50, then 100 ms between tries and does not
// queue: with dozens of service goroutines writing, the lock sat free while its waiters slept
// (the figures are in docs/architecture.md, "What the embedded store costs"). Queued here
// instead, a writer starts the moment the one before it answers.
//
// Reads pass straight through: SQLite's WAL lets them run beside the writer. Only the command
// is inspected (its name and $db); bytes are relayed unchanged.

// gatedCommands are the commands that write to a database's SQLite file.
var gatedCommands = map[string]bool{
	"insert": true, "update": true, "delete": true, "findandmodify": true,
	"create": true, "createindexes": true, "drop": true, "dropindexes": true,
	"dropdatabase": true, "renamecollection": true, "collmod": true,
}

const (
	opMsg            = 2013
	msgMoreToCome    = 1 << 1
	msgChecksum      = 1 << 0
	maxMessageLength = 48 << 20 // MongoDB's own limit on a message
)

// writeGates holds one gate per database name.
type writeGates struct {
	mu    sync.Mutex
	gates map[string]chan struct{}
}

func (g *writeGates) gate(db string) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	c, ok := g.gates[db]
	if !ok {
		c = make(chan struct{}, 1)
		g.gates[db] = c
	}
	return c
}

// relay accepts clients on ln and relays each to a new connection to upstream until ln is
// closed; then it closes every relayed connection and returns.
func relay(ln net.Listener, upstream string) {
	gates := &writeGates{gates: map[string]chan struct{}{}}
	var mu sync.Mutex
	open := map[net.Conn]bool{}
	var wg sync.WaitGroup
	track := func(c net.Conn, add bool) bool {
		mu.Lock()
		defer mu.Unlock()
		if open == nil {
			return false // shutting down
		}
		if add {
			open[c] = true
		} else {
			delete(open, c)
		}
		return true
	}
	for {
		client, err := ln.Accept()
		if err != nil {
			break
		}
		if !track(client, true) {
			client.Close()
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer track(client, false)
			serve(client, upstream, gates)
		}()
	}
	mu.Lock()
	for c := range open {
		c.Close()
	}
	open = nil
	mu.Unlock()
	wg.Wait()
}

// serve relays one client connection. A gated command takes its database's gate before it is
// sent upstream; the gate is given back when the reply to that command (matched by responseTo)
// has been relayed, or when either side goes away.
//
// Gates are kept by the request id they were taken for, not as "the" gate of the connection: a
// client reads a reply before the relay has given its gate back, and may send its next command
// at once. When that command writes another database, it takes that database's gate while the
// first is still held; with one slot per connection the new gate took the slot and the old one
// was never given back, and every later write of its database waited forever (seen once a
// service wrote two databases on one connection: payments-svc and its simulator's ledger).
func serve(client net.Conn, upstream string, gates *writeGates) {
	defer client.Close()
	server, err := net.Dial("tcp", upstream)
	if err != nil {
		return
	}
	var mu sync.Mutex
	held := map[int32]chan struct{}{} // gate taken, by the requestID whose reply gives it back
	release := func(responseTo int32, always bool) {
		mu.Lock()
		defer mu.Unlock()
		for id, g := range held {
			if always || id == responseTo {
				<-g
				delete(held, id)
			}
		}
	}
	done := make(chan struct{})
	// In this order: close the server side, wait for the reply relay to stop, give back a
	// gate still held.
	defer release(0, true)
	defer func() { <-done }()
	defer server.Close()

	go func() {
		defer close(done)
		defer client.Close() // unblocks the request loop below
		r := bufio.NewReaderSize(server, 64<<10)
		for {
			msg, err := readMessage(r)
			if err != nil {
				return
			}
			if _, err := client.Write(msg); err != nil {
				return
			}
			release(int32(binary.LittleEndian.Uint32(msg[8:12])), false)
		}
	}()

	r := bufio.NewReaderSize(client, 64<<10)
	for {
		msg, err := readMessage(r)
		if err != nil {
			break
		}
		if db, ok := gatedWrite(msg); ok {
			g := gates.gate(db)
			select {
			case g <- struct{}{}:
			case <-done: // the server side is gone; nothing would answer
				return
			}
			mu.Lock()
			held[int32(binary.LittleEndian.Uint32(msg[4:8]))] = g
			mu.Unlock()
		}
		if _, err := server.Write(msg); err != nil {
			break
		}
	}
}

// readMessage reads one whole wire-protocol message, header included.
func readMessage(r *bufio.Reader) ([]byte, error) {
	var header [16]byte
	if _, err := io.ReadFull(r, header[:]); err != nil {
		return nil, err
	}
	n := int(binary.LittleEndian.Uint32(header[0:4]))
	if n < 16 || n > maxMessageLength {
		return nil, errors.New("mongostore: malformed wire message length")
	}
	msg := make([]byte, n)
	copy(msg, header[:])
	if _, err := io.ReadFull(r, msg[16:]); err != nil {
		return nil, err
	}
	return msg, nil
}

// gatedWrite reports whether msg is an acknowledged OP_MSG command that writes, and its
// database. Anything it cannot read is relayed ungated: FerretDB answers it as it would have.
func gatedWrite(msg []byte) (string, bool) {
	if len(msg) < 21 || binary.LittleEndian.Uint32(msg[12:16]) != opMsg {
		return "", false
	}
	flags := binary.LittleEndian.Uint32(msg[16:20])
	if flags&msgMoreToCome != 0 {
		return "", false // unacknowledged: no reply would give the gate back
	}
	end := len(msg)
	if flags&msgChecksum != 0 {
		end -= 4
	}
	for p := 20; p < end; {
		kind := msg[p]
		p++
		if p+4 > end {
			return "", false
		}
		size := int(binary.LittleEndian.Uint32(msg[p : p+4]))
		if size < 5 || p+size > end {
			return "", false
		}
		if kind == 0 {
			body := bson.Raw(msg[p : p+size])
			first, err := body.IndexErr(0)
			if err != nil || !gatedCommands[strings.ToLower(first.Key())] {
				return "", false
			}
			db, ok := body.Lookup("$db").StringValueOK()
			return db, ok
		}
		p += size // a kind 1 section: size covers itself, the identifier and the documents
	}
	return "", false
}
