package docstore

import (
	"maps"
	"slices"
)

// Metadata is a metadata hash as stored: a list of pairs, sorted by key, rather than a
// subdocument, because its keys are the client's and a key with a dot, a leading $ or a NUL
// is not a valid field name on every store.
type Metadata []MetadataEntry

// MetadataEntry is one key and value.
type MetadataEntry struct {
	Key   string `bson:"k"`
	Value string `bson:"v"`
}

// MetadataOf returns the stored form of m.
func MetadataOf(m map[string]string) Metadata {
	out := make(Metadata, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, MetadataEntry{Key: k, Value: m[k]})
	}
	return out
}

// Map returns the hash; never nil.
func (md Metadata) Map() map[string]string {
	out := make(map[string]string, len(md))
	for _, kv := range md {
		out[kv.Key] = kv.Value
	}
	return out
}
