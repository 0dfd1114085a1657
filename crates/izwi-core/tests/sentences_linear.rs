//! Splitting a long text costs work in proportion to its length: the bytes allocated
//! while splitting are counted by this test binary's allocator (the only test here, so
//! nothing else allocates meanwhile).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use izwi_core::text::split_sentences;

struct Counting;

static ALLOCATED: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATED.fetch_add(layout.size(), Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATED.fetch_add(new_size, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn splitting_allocates_in_proportion_to_the_text() {
    // One long paragraph of short sentences and abbreviations: the splitter looks at
    // the word after each period, which once copied the whole rest of the paragraph.
    let unit = "Dr. Ames read it. Then Mr. Bo, who left, said no; e.g. twice! ";
    let text = unit.repeat(100_000 / unit.len());
    let before = ALLOCATED.load(Ordering::Relaxed);
    let sentences = split_sentences(&text);
    let allocated = ALLOCATED.load(Ordering::Relaxed) - before;
    assert_eq!(sentences.len(), 2 * (100_000 / unit.len()));
    assert!(
        allocated < 64 * text.len(),
        "{allocated} bytes allocated to split {} bytes",
        text.len()
    );
}
