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
		"github.com/hangdoc/hangdoc/internal/victin.(*pthreadMutex).Lock", // the middle differs
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

func TestWhole(t *testing.T) {
	long := "github.com/hangdoc/hangdoc/internal/victim.(*pthreadMutex).Lock"
	a, b := Whole(Offset, Offset2, long)
	for _, other := range []string{
		"github.com/hangdoc/hangdoc/internal/victin.(*pthreadMutex).Lock", // the middle differs: String does not see it
		long[:len(long)-1],
		long + "\x00", // the length differs, not the words
	} {
		if oa, ob := Whole(Offset, Offset2, other); oa == a || ob == b {
			t.Errorf("%q and %q share a hash", long, other)
		}
	}
	if a2, b2 := Whole(Offset, Offset2, long); a2 != a || b2 != b {
		t.Error("one string, two hashes")
	}
}
