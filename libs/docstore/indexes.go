package docstore

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// ListIndex is the index of a list of one owner's documents filtered on fields, newest first
// (Page's query and order): account, livemode, the fields, then _id descending. Every list
// filter gets one (and filters given together one of their own where the list is large), named
// after its keys: "account_livemode_<filter>_id".
func ListIndex(name string, fields ...string) mongo.IndexModel {
	return Index(name, append(append([]string{"account", "livemode"}, fields...), "-_id")...)
}

// Index is an index on keys, in order, each ascending unless written "-key". A unique or sparse
// one sets its options further (Options.SetUnique(true)).
func Index(name string, keys ...string) mongo.IndexModel {
	d := make(bson.D, 0, len(keys))
	for _, k := range keys {
		if f, desc := strings.CutPrefix(k, "-"); desc {
			d = append(d, bson.E{Key: f, Value: -1})
			continue
		}
		d = append(d, bson.E{Key: k, Value: 1})
	}
	return mongo.IndexModel{Keys: d, Options: options.Index().SetName(name)}
}
