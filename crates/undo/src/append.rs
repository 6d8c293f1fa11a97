//! Appending undo records to a log: on its last page, or a new page linked after it; alone in
//! an mtr of their own, or inside the caller's mtr beside the row change they undo.

use smallvec::SmallVec;

use barracuda_btree::{BTreeError, Mtr, Result};
use barracuda_page::{PageNo, UndoKind, UndoPage, UndoRecord, FIL_TRAILER_SIZE};

use crate::described::{change_described, change_described_appending, UNDO_FIELDS};
use crate::log::{page_err, UndoLog, UndoSpace};
use crate::roll_ptr::RollPtr;

impl UndoSpace {
    /// Appends `record` to `log` (numbered with the log's record count) and returns the roll
    /// pointer that names it. A full page gets a successor page.
    pub fn append(
        &self,
        log: &mut UndoLog,
        kind: UndoKind,
        space: u32,
        payload: &[u8],
    ) -> Result<RollPtr> {
        let page_size = self.pool.page_size();
        let record = UndoRecord {
            kind,
            space,
            undo_no: log.records,
            payload,
        };
        if payload.len() > barracuda_page::undo::max_payload_len(page_size) {
            return Err(BTreeError::corrupt(
                self.page_id(log.first_page),
                format!(
                    "an undo record of {} bytes does not fit a page",
                    payload.len()
                ),
            ));
        }
        let first_id = self.page_id(log.first_page);
        let mut mtr = Mtr::new(self.log.as_ref());
        let mut header = self.pool.get_exclusive(first_id)?;
        let mut last = if log.last_page == log.first_page {
            None
        } else {
            Some(self.pool.get_exclusive(self.page_id(log.last_page))?)
        };
        let fits = {
            let target = last.as_ref().unwrap_or(&header);
            let id = target.page_id();
            UndoPage::open_trusted(&target[..], page_size)
                .map_err(page_err(id))?
                .fits(&record)
        };
        let records = log.records + 1;
        let (page_no, offset) = if fits {
            let offsets = append_described(
                &mut mtr,
                &mut header,
                last.as_mut(),
                std::slice::from_ref(&record),
                records,
            )?;
            let offset = offsets.first().copied().unwrap_or_default();
            if let Some(last) = last {
                mtr.changed(last);
            }
            (log.last_page, offset)
        } else {
            let placed = self.append_to_new_page(&mut mtr, &mut header, last, log, &record)?;
            UndoPage::open_trusted(&mut header[..], page_size)
                .map_err(page_err(first_id))?
                .set_record_count(records);
            placed
        };
        mtr.changed(header);
        mtr.commit()?;
        log.appended(kind, payload);
        Ok(RollPtr {
            page_no,
            offset,
            insert: kind == UndoKind::Insert,
        })
    }

    /// Appends `record` to `log` like [`append`](Self::append), but inside the caller's `mtr`
    /// (the row change it undoes goes in the same one) and only when it fits the log's last
    /// page: `None`, with nothing changed, when it needs a new page (take the general path).
    /// The log's pages are latched after whatever the caller latched (a leaf): no one latches
    /// a log's pages before a leaf, and only its own transaction appends to them.
    pub fn append_in<'m>(
        &'m self,
        mtr: &mut Mtr<'m>,
        log: &mut UndoLog,
        kind: UndoKind,
        space: u32,
        payload: &[u8],
    ) -> Result<Option<RollPtr>> {
        Ok(self
            .append_run_in(mtr, log, space, &[(kind, payload)])?
            .first()
            .copied())
    }

    /// [`append_in`](Self::append_in) for several records at once (a run of rows written in
    /// one mtr): appends the longest prefix of `records` that fits the log's last page, as
    /// one change to it, and returns their roll pointers (none: nothing changed). The log's
    /// pages may be the mtr's already (an earlier append in it): they are taken back from
    /// it, not latched again.
    pub fn append_run_in<'m>(
        &'m self,
        mtr: &mut Mtr<'m>,
        log: &mut UndoLog,
        space: u32,
        records: &[(UndoKind, &[u8])],
    ) -> Result<SmallVec<[RollPtr; 1]>> {
        let page_size = self.pool.page_size();
        let first_id = self.page_id(log.first_page);
        let (mut header, header_taken) = match mtr.take_changed(first_id) {
            Some(guard) => (guard, true),
            None => (self.pool.get_exclusive(first_id)?, false),
        };
        let (mut last, last_taken) = if log.last_page == log.first_page {
            (None, false)
        } else {
            let id = self.page_id(log.last_page);
            match mtr.take_changed(id) {
                Some(guard) => (Some(guard), true),
                None => (Some(self.pool.get_exclusive(id)?), false),
            }
        };
        let undo_records: SmallVec<[UndoRecord<'_>; 1]> = records
            .iter()
            .zip(log.records..)
            .map(|(&(kind, payload), undo_no)| UndoRecord {
                kind,
                space,
                undo_no,
                payload,
            })
            .collect();
        let fitting = {
            // Through shared borrows first: a guard borrowed mutably and not handed to the mtr
            // counts as a change never logged.
            let target = last.as_ref().unwrap_or(&header);
            let id = target.page_id();
            let page = UndoPage::open_trusted(&target[..], page_size).map_err(page_err(id))?;
            let room = (page_size.bytes() - FIL_TRAILER_SIZE).saturating_sub(page.free().into());
            undo_records
                .iter()
                .scan(0usize, |used, r| {
                    *used += r.encoded_len();
                    Some(*used)
                })
                .take_while(|&used| used <= room)
                .count()
        };
        let Some(fitting_records) = undo_records.get(..fitting).filter(|r| !r.is_empty()) else {
            // Give back what the mtr held (it may have changed them for earlier rows).
            if let Some(last) = last.filter(|_| last_taken) {
                mtr.changed(last);
            }
            if header_taken {
                mtr.changed(header);
            }
            return Ok(SmallVec::new());
        };
        let count = log.records + fitting as u32;
        let offsets = append_described(mtr, &mut header, last.as_mut(), fitting_records, count)?;
        if let Some(last) = last {
            mtr.changed(last);
        }
        mtr.changed(header);
        for r in fitting_records {
            log.appended(r.kind, r.payload);
        }
        Ok(fitting_records
            .iter()
            .zip(offsets)
            .map(|(r, offset)| RollPtr {
                page_no: log.last_page,
                offset,
                insert: r.kind == UndoKind::Insert,
            })
            .collect())
    }

    /// Links a new page after the log's last one — the header page, or `last` (latched by the
    /// caller) — and appends `record` to it.
    fn append_to_new_page<'a>(
        &'a self,
        mtr: &mut Mtr<'a>,
        header: &mut barracuda_buffer_pool::ExclusiveGuard<'a>,
        last: Option<barracuda_buffer_pool::ExclusiveGuard<'a>>,
        log: &mut UndoLog,
        record: &UndoRecord<'_>,
    ) -> Result<(PageNo, u16)> {
        let page_size = self.pool.page_size();
        let new_no = self.alloc.allocate(self.space(), Some(log.last_page))?;
        let new_id = self.page_id(new_no);
        let mut fresh = self.pool.create(new_id)?;
        let mut page = UndoPage::init(
            &mut fresh[..],
            page_size,
            new_id,
            log.first_page,
            log.last_page,
        )
        .map_err(page_err(new_id))?;
        let offset = page.append(record).map_err(page_err(new_id))?;
        mtr.changed(fresh);
        let first_id = self.page_id(log.first_page);
        match last {
            None => UndoPage::open_trusted(&mut header[..], page_size)
                .map_err(page_err(first_id))?
                .set_next_page(new_no),
            Some(mut last) => {
                let last_id = last.page_id();
                UndoPage::open_trusted(&mut last[..], page_size)
                    .map_err(page_err(last_id))?
                    .set_next_page(new_no);
                mtr.changed(last);
            }
        }
        UndoPage::open_trusted(&mut header[..], page_size)
            .map_err(page_err(first_id))?
            .set_last_page(new_no);
        log.last_page = new_no;
        Ok((new_no, offset))
    }
}

/// Appends `records` to the log's last page — `last`, or the header page when `last` is
/// `None` — and sets the header's record count to `count`, describing both changes to `mtr`
/// (one change of each page, however many records). The caller checked that the records fit.
/// Returns their offsets.
fn append_described<'g>(
    mtr: &mut Mtr<'_>,
    header: &mut barracuda_buffer_pool::ExclusiveGuard<'g>,
    last: Option<&mut barracuda_buffer_pool::ExclusiveGuard<'g>>,
    records: &[UndoRecord<'_>],
    count: u32,
) -> Result<SmallVec<[u16; 1]>> {
    let page_size_of = |g: &barracuda_buffer_pool::ExclusiveGuard<'_>| {
        barracuda_page::PageSize::from_bytes(g.len())
    };
    let len: usize = records.iter().map(UndoRecord::encoded_len).sum();
    let free_of = |g: &barracuda_buffer_pool::ExclusiveGuard<'_>, page_size| {
        let id = g.page_id();
        UndoPage::open_trusted(&g[..], page_size)
            .map(|p| usize::from(p.free()))
            .map_err(page_err(id))
    };
    let header_id = header.page_id();
    let Some(page_size) = page_size_of(header) else {
        return Err(BTreeError::corrupt(
            header_id,
            "an undo page of no page size",
        ));
    };
    let append_all = |page: &mut UndoPage<&mut [u8]>, id| {
        records
            .iter()
            .map(|r| page.append(r).map_err(page_err(id)))
            .collect::<Result<SmallVec<[u16; 1]>>>()
    };
    match last {
        None => {
            let free = free_of(header, page_size)?;
            change_described_appending(mtr, header, &[UNDO_FIELDS], free..free + len, |page| {
                let mut page =
                    UndoPage::open_trusted(page, page_size).map_err(page_err(header_id))?;
                let offsets = append_all(&mut page, header_id)?;
                page.set_record_count(count);
                Ok(offsets)
            })
        }
        Some(last) => {
            let last_id = last.page_id();
            let free = free_of(last, page_size)?;
            let offsets =
                change_described_appending(mtr, last, &[UNDO_FIELDS], free..free + len, |page| {
                    let mut page =
                        UndoPage::open_trusted(page, page_size).map_err(page_err(last_id))?;
                    append_all(&mut page, last_id)
                })?;
            change_described(mtr, header, &[UNDO_FIELDS], |page| {
                UndoPage::open_trusted(page, page_size)
                    .map_err(page_err(header_id))?
                    .set_record_count(count);
                Ok(())
            })?;
            Ok(offsets)
        }
    }
}
