// rustspin: a std::sync::Mutex held by a thread that spins forever, so its
// waiters never get it. A Rust Mutex records no owner (a futex word of 0,
// 1 or 2): what the kernel shows is three threads in futex waits and one
// on a CPU.
//
// Threads "renderer-0".."renderer-3" share one Mutex<u64>. renderer-0
// takes it and loops in paginate (an xorshift that never reaches 0); the
// others block in lock(). With the argument "read", renderer-0 instead
// reads, holding the lock, from a socket whose other end main keeps open
// and never writes: blocked in read. "read-crowd" adds two threads,
// "poller-0" and "poller-1", that nap in a loop of their own: three
// threads could hold the lock, and only renderer-0 stands in renderer,
// where the waiters lock it. Ready line, once the three wait in a futex:
//
//   ready pid=P holder=TID waiters=TID,TID,TID
//
// Build: rustc -O -C force-frame-pointers=yes -o rustspin rustspin.rs
use std::fs;
use std::io::Read;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

static HOLDER: AtomicI32 = AtomicI32::new(0);

fn gettid() -> i32 {
    // /proc/thread-self is this thread's own directory.
    fs::read_link("/proc/thread-self")
        .ok()
        .and_then(|p| p.file_name().and_then(|n| n.to_str()).and_then(|s| s.parse().ok()))
        .unwrap_or(0)
}

#[inline(never)]
fn paginate(pages: &mut u64) {
    let mut x = *pages | 1;
    while x != 0 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        // A volatile store: the loop is not optimised away (black_box
        // is newer than Debian's rustc).
        unsafe { std::ptr::write_volatile(pages as *mut u64, x) };
    }
}

#[inline(never)]
fn poll_forever() {
    loop {
        thread::sleep(Duration::from_millis(200));
    }
}

#[inline(never)]
fn fetch(mut conn: UnixStream) {
    let mut buf = [0u8; 64];
    let _ = conn.read(&mut buf);
}

fn renderer(doc: Arc<Mutex<u64>>, first: bool, tids: Arc<Mutex<Vec<i32>>>, conn: Option<UnixStream>) {
    let tid = gettid();
    if first {
        let mut pages = doc.lock().unwrap();
        HOLDER.store(tid, Ordering::SeqCst);
        match conn {
            Some(c) => fetch(c),
            None => paginate(&mut pages),
        }
    } else {
        tids.lock().unwrap().push(tid);
        let _pages = doc.lock().unwrap();
    }
}

fn in_futex(tid: i32) -> bool {
    let pid = std::process::id();
    fs::read_to_string(format!("/proc/{}/task/{}/syscall", pid, tid))
        .map(|s| s.starts_with("202 "))
        .unwrap_or(false)
}

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_default();
    let read = mode.starts_with("read");
    if mode.ends_with("crowd") {
        for i in 0..2 {
            thread::Builder::new().name(format!("poller-{}", i)).spawn(poll_forever).unwrap();
        }
    }
    let (mine, theirs) = UnixStream::pair().unwrap();
    let mut theirs = if read { Some(theirs) } else { None };
    let doc = Arc::new(Mutex::new(1u64));
    let tids = Arc::new(Mutex::new(Vec::new()));
    let mut handles = Vec::new();
    for i in 0..4 {
        let (d, t) = (doc.clone(), tids.clone());
        let conn = if i == 0 { theirs.take() } else { None };
        handles.push(thread::Builder::new().name(format!("renderer-{}", i)).spawn(move || renderer(d, i == 0, t, conn)).unwrap());
        if i == 0 {
            while HOLDER.load(Ordering::SeqCst) == 0 {
                thread::sleep(Duration::from_millis(1));
            }
        }
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let waiters = tids.lock().unwrap().clone();
        if waiters.len() == 3 && waiters.iter().all(|&t| in_futex(t)) {
            let list: Vec<String> = waiters.iter().map(|t| t.to_string()).collect();
            println!("ready pid={} holder={} waiters={}", std::process::id(), HOLDER.load(Ordering::SeqCst), list.join(","));
            break;
        }
        if Instant::now() > deadline {
            eprintln!("hang not reached within 60s");
            std::process::exit(1);
        }
        thread::sleep(Duration::from_millis(10));
    }
    for h in handles {
        h.join().unwrap();
    }
    drop(mine); // kept open, never written, until then
}
