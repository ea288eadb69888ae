import PayhookCore

/// Every JSON path of a PXP charge request that PROVIDERS.md marks UNCONFIRMED, in one place.
///
/// PXP documents the values (the Token Vault's `gatewayTokenId` "instead of the full card
/// details"; the processing models `MerchantInitiatedInitialRecurring`,
/// `MerchantInitiatedSubsequentRecurring`, `MerchantInitiatedResubmission`, …) but not where
/// they go in `POST /transactions`. When a sandbox request or PXP support settles a path,
/// change it here (and in the emulator's copy of the same paths, `PXPEmulator.chargeProblem`)
/// and nowhere else.
///
/// | what                       | assumed member                                          |
/// |----------------------------|---------------------------------------------------------|
/// | the stored card            | `fundingData.card.gatewayTokenId`                       |
/// | the processing model       | `recurring.processingModel`                             |
/// | the earlier transaction    | `recurring.previousTransactionReference`                |
enum PXPUnconfirmedFields {
    /// The processing models PXP's reference lists for card-on-file and merchant-initiated
    /// transactions.
    enum ProcessingModel: String, Sendable, CaseIterable {
        case cardOnFileShopperConsent = "CardOnFileShopperConsent"
        case cardOnFileShopperInitiated = "CardOnFileShopperInitiated"
        case initialRecurring = "MerchantInitiatedInitialRecurring"
        case subsequentRecurring = "MerchantInitiatedSubsequentRecurring"
        case resubmission = "MerchantInitiatedResubmission"
        case reAuthorisation = "MerchantInitiatedReAuthorisation"
        case delayedCharge = "MerchantInitiatedDelayedCharge"
        case noShow = "MerchantInitiatedNoShow"
    }

    /// The model of a merchant-initiated charge: a retry after a soft decline is a
    /// resubmission, every other charge a subsequent recurring one, the first included.
    /// `MerchantInitiatedInitialRecurring` is the transaction that saves the card for later
    /// recurring payments (https://developer.pxp.io/guides/transactions/e-commerce/recurring-payments);
    /// payhook charges cards that were saved before, and never makes that setup.
    static func processingModel(_ credential: StoredCredential) -> ProcessingModel {
        switch credential.reason {
        case .resubmission: .resubmission
        case .recurring: .subsequentRecurring
        }
    }

    /// The member that carries the stored card.
    static func storedCard(_ credential: StoredCredential) -> (String, JSONOutput?) {
        ("fundingData", .object(omittingAbsent: [("card", .object(omittingAbsent: [("gatewayTokenId", .string(credential.token))]))]))
    }

    /// The member that carries the processing model and the earlier transaction.
    static func recurring(_ credential: StoredCredential) -> (String, JSONOutput?) {
        ("recurring", .object(omittingAbsent: [
            ("processingModel", .string(processingModel(credential).rawValue)),
            ("previousTransactionReference", credential.previousTransactionReference.map(JSONOutput.string)),
        ]))
    }
}
