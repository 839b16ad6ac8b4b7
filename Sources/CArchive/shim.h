// libarchive (Debian: libarchive-dev). Only LatchkeyBackup imports this.
#include <archive.h>
#include <archive_entry.h>
