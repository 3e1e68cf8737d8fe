package docstore

import "go.mongodb.org/mongo-driver/v2/bson"

// AsMongoDB returns db with the MongoDB strategy whatever its server, so the contract suite
// runs that strategy's writes on the embedded store too: within one process they are correct
// there, since the writers of each document are serialised in-process; only the cross-process
// case needs a real MongoDB.
func AsMongoDB(db *DB) *DB { return &DB{db: db.db, strategy: mongoDB{}} }

// RememberRead is what a read from the store does to the cache.
func RememberRead[T any](c *Collection[T], id string, raw bson.Raw) { c.rememberRead(id, raw) }
