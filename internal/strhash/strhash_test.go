package strhash

import "testing"

func TestString(t *testing.T) {
	long := "github.com/hangdoc/hangdoc/internal/victim.(*pthreadMutex).Lock"
	if String(Offset, long) != String(Offset, long) {
		t.Error("one string, two hashes")
	}
	for _, other := range []string{
		"github.com/hangdoc/hangdoc/internal/victim.(*pthreadMutex).Lick", // the tail differs
		"gitlab.com/hangdoc/hangdoc/internal/victim.(*pthreadMutex).Lock", // the head differs
		long + "x", // the length differs
	} {
		if String(Offset, long) == String(Offset, other) {
			t.Errorf("%q and %q hash alike", long, other)
		}
	}
	if String(String(Offset, "a"), "bc") == String(String(Offset, "ab"), "c") {
		t.Error("the lengths do not separate the strings mixed in")
	}
}
