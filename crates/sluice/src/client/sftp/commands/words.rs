//! Command lines as sftp reads them: words (quotes, backslashes), a
//! command's flags, local globs, the help text.

use super::common::*;

pub(super) fn arg<'a>(args: &'a [Vec<u8>], i: usize, name: &str) -> Result<&'a [u8], Fail> {
    // Flags are not taken by these commands; the operands are positional.
    args.get(i)
        .map(Vec::as_slice)
        .ok_or_else(|| err(&format!("You must specify a path after a {name} command.")))
}

/// A command's flags (`-x`, bundled) before its operands.
pub(super) fn flags(
    args: &[Vec<u8>],
    spec: &str,
    name: &str,
) -> Result<(Vec<char>, Vec<Vec<u8>>), Fail> {
    let mut fl = Vec::new();
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if a.len() < 2 || a.first() != Some(&b'-') {
            break;
        }
        i += 1;
        if a.as_slice() == b"--" {
            break;
        }
        for c in a.iter().skip(1) {
            let c = *c as char;
            if !spec.contains(c) {
                return Err(err(&format!("{name}: Invalid flag -{c}")));
            }
            fl.push(c);
        }
    }
    Ok((fl, args.get(i..).unwrap_or_default().to_vec()))
}

/// Local paths a pattern names (glob(3)); the pattern itself when it has
/// no glob characters and exists.
pub(super) fn local_glob(p: &[u8]) -> Vec<PathBuf> {
    if !remote::has_glob(p) {
        let path = path_of(p);
        return if std::fs::symlink_metadata(&path).is_ok() {
            vec![path]
        } else {
            Vec::new()
        };
    }
    let Ok(c) = std::ffi::CString::new(p) else {
        return Vec::new();
    };
    crate::sys::glob::glob(&c)
        .unwrap_or_default()
        .iter()
        .map(|p| path_of(p))
        .collect()
}

pub(super) const HELP: &str = "Available commands:
bye                                Quit sftp
cd path                            Change remote directory to 'path'
chgrp grp path                     Change group of file 'path' to 'grp'
chmod mode path                    Change permissions of file 'path' to 'mode'
chown own path                     Change owner of file 'path' to 'own'
copy oldpath newpath               Copy remote file
cp oldpath newpath                 Copy remote file
df [-hi] [path]                    Display statistics for current directory or
                                   filesystem containing 'path'
exit                               Quit sftp
get [-afpPr] remote [local]        Download file
reget [-fpPr] remote [local]       Resume download file
reput [-fpPr] [local] remote       Resume upload file
help                               Display this help text
lcd path                           Change local directory to 'path'
lls [ls-options [path]]            Display local directory listing
lmkdir path                        Create local directory
ln [-s] oldpath newpath            Link remote file (-s for symlink)
lpwd                               Print local working directory
lumask umask                       Set local umask to 'umask'
ls [-1afhlnrSt] [path]             Display remote directory listing
mkdir path                         Create remote directory
progress                           Toggle display of progress meter
put [-afpPr] [local [remote]]      Upload file
pwd                                Display remote working directory
quit                               Quit sftp
rename oldpath newpath             Rename remote file
rm path                            Delete remote file
rmdir path                         Remove remote directory
symlink oldpath newpath            Symlink remote file
version                            Show SFTP version
!command                           Execute 'command' in local shell
!                                  Escape to local shell
?                                  Synonym for help";
