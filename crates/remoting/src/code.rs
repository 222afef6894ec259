//! Request, response and language codes, and `MQVersion` ordinals, with lossless `i32` round-trips.

/// Declares a closed enum of known codes plus an `Unknown(i32)` catch-all, so any value round-trips.
macro_rules! int_code {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $value:expr,)* }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)*
            /// A value this crate has no name for; kept as is.
            Unknown(i32),
        }

        impl $name {
            /// The wire value.
            pub const fn to_i32(self) -> i32 {
                match self {
                    $(Self::$variant => $value,)*
                    Self::Unknown(v) => v,
                }
            }

            /// Every known code, in declaration order.
            pub const ALL: &'static [Self] = &[$(Self::$variant,)*];

            /// The Rust variant name (`GetRouteinfoByTopic`); `None` for `Unknown`.
            pub const fn variant_name(self) -> Option<&'static str> {
                match self {
                    $(Self::$variant => Some(stringify!($variant)),)*
                    Self::Unknown(_) => None,
                }
            }

            /// The Java constant name (`GET_ROUTEINFO_BY_TOPIC`); `None` for `Unknown`.
            pub fn java_name(self) -> Option<String> {
                self.variant_name().map(screaming_snake)
            }

            /// The code for a wire value; unknown values become `Unknown(v)`.
            pub const fn from_i32(v: i32) -> Self {
                match v {
                    $($value => Self::$variant,)*
                    other => Self::Unknown(other),
                }
            }
        }

        impl From<i32> for $name {
            fn from(v: i32) -> Self {
                Self::from_i32(v)
            }
        }

        impl From<$name> for i32 {
            fn from(c: $name) -> i32 {
                c.to_i32()
            }
        }
    };
}

/// `GetRouteinfoByTopic` → `GET_ROUTEINFO_BY_TOPIC` (Java's constant names are the variant
/// names split at each capital).
fn screaming_snake(camel: &str) -> String {
    let mut out = String::with_capacity(camel.len() + 8);
    for (i, c) in camel.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

int_code! {
    /// Request codes the nameserver and the controller serve or send (Java `RequestCode`).
    RequestCode {
        PutKvConfig = 100,
        GetKvConfig = 101,
        DeleteKvConfig = 102,
        RegisterBroker = 103,
        UnregisterBroker = 104,
        GetRouteinfoByTopic = 105,
        GetBrokerClusterInfo = 106,
        WipeWritePermOfBroker = 205,
        GetAllTopicListFromNameserver = 206,
        DeleteTopicInNamesrv = 216,
        RegisterTopicInNamesrv = 217,
        GetKvlistByNamespace = 219,
        GetTopicsByCluster = 224,
        GetSystemTopicListFromNs = 304,
        GetUnitTopicList = 311,
        GetHasUnitSubTopicList = 312,
        GetHasUnitSubUnunitTopicList = 313,
        UpdateNamesrvConfig = 318,
        GetNamesrvConfig = 319,
        QueryDataVersion = 322,
        AddWritePermOfBroker = 327,
        GetBrokerMemberGroup = 901,
        BrokerHeartbeat = 904,
        NotifyMinBrokerIdChange = 905,
        ControllerAlterSyncStateSet = 1001,
        ControllerElectMaster = 1002,
        ControllerRegisterBroker = 1003,
        ControllerGetReplicaInfo = 1004,
        ControllerGetMetadataInfo = 1005,
        ControllerGetSyncStateData = 1006,
        GetBrokerEpochCache = 1007,
        NotifyBrokerRoleChanged = 1008,
        UpdateControllerConfig = 1009,
        GetControllerConfig = 1010,
        CleanBrokerData = 1011,
        ControllerGetNextBrokerId = 1012,
        ControllerApplyBrokerId = 1013,
    }
}

int_code! {
    /// Response codes the nameserver and the controller answer with (Java
    /// `RemotingSysResponseCode` + `ResponseCode`).
    ResponseCode {
        Success = 0,
        SystemError = 1,
        SystemBusy = 2,
        RequestCodeNotSupported = 3,
        TransactionFailed = 4,
        NoPermission = 16,
        TopicNotExist = 17,
        QueryNotFound = 22,
        GoAway = 1500,
        ControllerFencedMasterEpoch = 2000,
        ControllerFencedSyncStateSetEpoch = 2001,
        ControllerInvalidMaster = 2002,
        ControllerInvalidReplicas = 2003,
        ControllerMasterNotAvailable = 2004,
        ControllerInvalidRequest = 2005,
        ControllerBrokerNotAlive = 2006,
        ControllerNotLeader = 2007,
        ControllerBrokerMetadataNotExist = 2008,
        ControllerInvalidCleanBrokerMetadata = 2009,
        ControllerBrokerNeedToBeRegistered = 2010,
        ControllerMasterStillExist = 2011,
        ControllerElectMasterFailed = 2012,
        ControllerAlterSyncStateSetFailed = 2013,
        ControllerBrokerIdInvalid = 2014,
        ControllerJraftInternalError = 2015,
        ControllerBrokerLiveInfoNotExists = 2016,
    }
}

/// The sender's language (Java `LanguageCode`): a byte in binary headers, a name in JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum LanguageCode {
    #[default]
    Java,
    Cpp,
    Dotnet,
    Python,
    Delphi,
    Erlang,
    Ruby,
    Other,
    Http,
    Go,
    Php,
    Oms,
    Rust,
    NodeJs,
    /// A code this crate has no name for (Java decodes it to null); kept as is.
    Unknown(u8),
}

const LANGUAGES: [(LanguageCode, &str); 14] = [
    (LanguageCode::Java, "JAVA"),
    (LanguageCode::Cpp, "CPP"),
    (LanguageCode::Dotnet, "DOTNET"),
    (LanguageCode::Python, "PYTHON"),
    (LanguageCode::Delphi, "DELPHI"),
    (LanguageCode::Erlang, "ERLANG"),
    (LanguageCode::Ruby, "RUBY"),
    (LanguageCode::Other, "OTHER"),
    (LanguageCode::Http, "HTTP"),
    (LanguageCode::Go, "GO"),
    (LanguageCode::Php, "PHP"),
    (LanguageCode::Oms, "OMS"),
    (LanguageCode::Rust, "RUST"),
    (LanguageCode::NodeJs, "NODE_JS"),
];

impl LanguageCode {
    /// The wire byte.
    pub fn to_u8(self) -> u8 {
        match self {
            Self::Unknown(b) => b,
            known => LANGUAGES.iter().position(|(l, _)| *l == known).unwrap_or(7) as u8,
        }
    }

    /// The language for a wire byte; unknown bytes are kept as `Unknown(b)`.
    pub fn from_u8(b: u8) -> Self {
        LANGUAGES.get(b as usize).map_or(Self::Unknown(b), |(l, _)| *l)
    }

    /// The Java enum name (`"JAVA"`, `"GO"`, …); `"OTHER"` for an unknown code.
    pub fn name(self) -> &'static str {
        match self {
            Self::Unknown(_) => "OTHER",
            known => LANGUAGES.iter().find(|(l, _)| *l == known).map_or("OTHER", |(_, n)| n),
        }
    }

    /// Parses a Java enum name, case-insensitively like fastjson; `None` for an unknown name.
    pub fn from_name(name: &str) -> Option<Self> {
        LANGUAGES.iter().find(|(_, n)| n.eq_ignore_ascii_case(name)).map(|(l, _)| *l)
    }
}

/// `MQVersion.Version` ordinals as carried in the `version` header field.
pub mod version {
    pub const V3_0_11: i32 = 37;
    pub const V3_4_9: i32 = 121;
    pub const V4_0_0: i32 = 213;
    pub const V4_5_2: i32 = 317;
    pub const V4_9_0: i32 = 393;
    pub const V4_9_3: i32 = 399;
    pub const V4_9_4: i32 = 401;
    pub const V4_9_8: i32 = 409;
    pub const V5_0_0: i32 = 413;
    pub const V5_1_0: i32 = 433;
    pub const V5_2_0: i32 = 453;
    pub const V5_3_0: i32 = 473;
    pub const V5_3_1: i32 = 475;
    pub const V5_3_2: i32 = 477;
    pub const V5_3_3: i32 = 479;
    pub const V5_4_0: i32 = 493;
    pub const HIGHER_VERSION: i32 = 612;
    /// The version this server claims in its responses (Java `MQVersion.CURRENT_VERSION`).
    pub const CURRENT: i32 = V5_3_3;

    /// The release an ordinal stands for, for display: `"5.3.3"`, `"4.9.4-SNAPSHOT"`; `None`
    /// before 4.0.0 (3.x ordinals are irregular) and past 5.9.9. From 4.0.0 on `MQVersion`
    /// has a SNAPSHOT and a release per patch level, ten patch levels per minor, and 4.9.9 is
    /// followed by 5.0.0.
    pub fn name(ordinal: i32) -> Option<String> {
        let (major, base) = match ordinal {
            V4_0_0..V5_0_0 => (4, V4_0_0),
            V5_0_0..HIGHER_VERSION => (5, V5_0_0),
            _ => return None,
        };
        let step = ordinal - base;
        let level = (step + 1) / 2;
        let snapshot = if step % 2 == 1 { "-SNAPSHOT" } else { "" };
        Some(format!("{major}.{}.{}{snapshot}", level / 10, level % 10))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_codes_round_trip() {
        assert_eq!(RequestCode::from_i32(999), RequestCode::Unknown(999));
        assert_eq!(RequestCode::from_i32(999).to_i32(), 999);
        assert_eq!(RequestCode::from_i32(105), RequestCode::GetRouteinfoByTopic);
        assert_eq!(ResponseCode::from_i32(1500), ResponseCode::GoAway);
        assert_eq!(ResponseCode::from_i32(-7).to_i32(), -7);
    }

    /// TV-28: language byte 0x0c ⇔ RUST, "GO" ⇔ 9, "JAVA" ⇔ 0.
    #[test]
    fn tv28_language_codes() {
        assert_eq!(LanguageCode::from_u8(0x0c), LanguageCode::Rust);
        assert_eq!(LanguageCode::Rust.to_u8(), 12);
        assert_eq!(LanguageCode::from_name("RUST"), Some(LanguageCode::Rust));
        assert_eq!(LanguageCode::from_name("GO").unwrap().to_u8(), 9);
        assert_eq!(LanguageCode::from_name("JAVA").unwrap().to_u8(), 0);
        assert_eq!(LanguageCode::from_name("java"), Some(LanguageCode::Java));
        assert_eq!(LanguageCode::from_u8(200), LanguageCode::Unknown(200));
        assert_eq!(LanguageCode::Unknown(200).to_u8(), 200);
    }
}

#[cfg(test)]
mod name_tests {
    use super::*;

    #[test]
    fn java_names_are_the_variant_names_in_screaming_snake_case() {
        assert_eq!(
            RequestCode::GetRouteinfoByTopic.java_name().as_deref(),
            Some("GET_ROUTEINFO_BY_TOPIC")
        );
        assert_eq!(
            RequestCode::GetHasUnitSubUnunitTopicList.java_name().as_deref(),
            Some("GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST")
        );
        assert_eq!(ResponseCode::TopicNotExist.java_name().as_deref(), Some("TOPIC_NOT_EXIST"));
        assert_eq!(RequestCode::Unknown(7).java_name(), None);
        assert!(RequestCode::ALL.iter().all(|c| RequestCode::from_i32(c.to_i32()) == *c));
    }

    #[test]
    fn version_ordinals_name_their_release() {
        use version::*;
        assert_eq!(name(V5_3_3).as_deref(), Some("5.3.3"));
        assert_eq!(name(V4_9_3).as_deref(), Some("4.9.3"));
        assert_eq!(name(V4_9_4).as_deref(), Some("4.9.4"));
        assert_eq!(name(V4_9_4 - 1).as_deref(), Some("4.9.4-SNAPSHOT"));
        assert_eq!(name(V4_5_2).as_deref(), Some("4.5.2"));
        assert_eq!(name(V5_4_0).as_deref(), Some("5.4.0"));
        assert_eq!(name(V5_0_0).as_deref(), Some("5.0.0"));
        assert_eq!(name(V3_4_9), None);
    }
}
