package native

import "testing"

func TestDemangle(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"paginate_forever", "paginate_forever"},
		{"_ZN3foo3barEv", "foo::bar"},
		{"_ZNK3foo3Bar3getEv", "foo::Bar::get"},
		{"_Z6renderv", "render"},
		{"_ZN5Cache7refreshEi", "Cache::refresh"},
		{"_ZN5CacheC2Ev", "Cache::Cache"},
		{"_ZN5CacheD1Ev", "Cache::~Cache"},
		{"_ZN4core3ptr13drop_in_place17h0123456789abcdefE", "core::ptr::drop_in_place"},
		{"_ZN3std4sync5mutex14Mutex$LT$T$GT$4lock17h9f3c2a1b0d4e5f67E", "std::sync::mutex::Mutex<T>::lock"},
		{"_ZN60_$LT$alloc..vec..Vec$LT$T$GT$$u20$as$u20$core..ops..Drop$GT$4drop17h0123456789abcdefE", "<alloc::vec::Vec<T> as core::ops::Drop>::drop"},
		// Not read whole: left as it is.
		{"_ZNSt6vectorIiSaIiEE9push_backEOi", "_ZNSt6vectorIiSaIiEE9push_backEOi"},
		{"_RNvCs1234_7mycrate4main", "mycrate::main"},
		{"_RNvMNtNtNtNtCsjrHSEGnQ3l9_3std3sys4sync5mutex5futexNtB2_5Mutex14lock_contended", "std::sys::sync::mutex::futex::Mutex::lock_contended"},
		{"_RNvMs0_NtNtNtCsjrHSEGnQ3l9_3std3sys6thread4unixNtB5_6Thread4join", "std::sys::thread::unix::Thread::join"},
		{"_RNvNvMs0_NtNtNtCsjrHSEGnQ3l9_3std3sys6thread4unixNtB7_6Thread3new12thread_start", "std::sys::thread::unix::Thread::new::thread_start"},
		{"_RINvNtCs1_4core3mem4dropNtCs2_5alloc3VecE", "core::mem::drop"},
		{"_R", "_R"},
		{"_ZN99short", "_ZN99short"},
		{"_ZN", "_ZN"},
		{"_Z", "_Z"},
	} {
		if got := demangle(tc.in); got != tc.want {
			t.Errorf("demangle(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzDemangle(f *testing.F) {
	f.Add("_ZN3foo3barEv")
	f.Add("_ZN4core3ptr13drop_in_place17h0123456789abcdefE")
	f.Fuzz(func(t *testing.T, s string) {
		if got := demangle(s); len(got) > 2*len(s)+8 {
			t.Fatalf("demangle(%q) = %q: longer than the name", s, got)
		}
	})
}
