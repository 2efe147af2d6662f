//! What the controller's runtime does for security after a batch: the authorizer gets the
//! batch's ACL changes (`Authorizer::acls_changed`) before the client is answered, so a client
//! that created an ACL is authorized by it on its next request.

use kcoord_controller::AclChange;

use super::ControllerRuntime;

impl ControllerRuntime {
    /// Hands the authorizer the ACL changes of an applied batch.
    pub(super) fn feed_authorizer(&self, changes: &[AclChange]) {
        if let (Some(authorizer), false) = (&self.authorizer, changes.is_empty()) {
            authorizer.acls_changed(changes);
        }
    }
}
